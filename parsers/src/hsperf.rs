//! HotSpot PerfData (the `/tmp/hsperfdata_USER/PID` file `jstat` reads),
//! format version 2: bytes in, named counters out.
//!
//! Layout (HotSpot `perfMemory.hpp`, `perfData.hpp`): a 32-byte prologue
//! (magic `CA FE C0 C0` in that byte order always, then the byte order of
//! everything else, major and minor version, the `accessible` flag, bytes
//! used, overflow, modification time, offset of the first entry and number
//! of entries), then entries, each with a 20-byte header (its length, the
//! offset of its NUL-terminated name and of its data, both from the entry's
//! start, vector length, type, flags, units, variability). Entries are
//! stepped by their own length: a later JDK may lengthen the header.
//!
//! The file is shared memory the JVM writes while it is read, so every
//! length and offset is checked against the bytes there are; nothing here
//! panics on any input.

use std::fmt;

/// The first four bytes of every PerfData file, whatever its byte order.
pub const PERFDATA_MAGIC: [u8; 4] = [0xca, 0xfe, 0xc0, 0xc0];
/// Bytes of the prologue.
pub const PROLOGUE_LEN: usize = 32;
/// Bytes of an entry's header before its name.
const ENTRY_HEADER_LEN: usize = 20;

/// Byte order of a PerfData file: the JVM's native one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Big,
    Little,
}

impl ByteOrder {
    fn i32(self, bytes: [u8; 4]) -> i32 {
        match self {
            ByteOrder::Big => i32::from_be_bytes(bytes),
            ByteOrder::Little => i32::from_le_bytes(bytes),
        }
    }

    fn i64(self, bytes: [u8; 8]) -> i64 {
        match self {
            ByteOrder::Big => i64::from_be_bytes(bytes),
            ByteOrder::Little => i64::from_le_bytes(bytes),
        }
    }
}

/// Why bytes are not (yet) a PerfData file one can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfDataError {
    /// Fewer bytes than the prologue: a file being created, or not PerfData.
    TooShort(usize),
    BadMagic([u8; 4]),
    BadByteOrder(u8),
    UnsupportedVersion {
        major: u8,
        minor: u8,
    },
    /// The JVM has not finished creating its counters yet.
    NotAccessible,
    /// An entry's length, name or data lies outside the bytes there are.
    BadEntry {
        index: usize,
        offset: usize,
    },
}

impl fmt::Display for PerfDataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PerfDataError::TooShort(len) => {
                write!(
                    f,
                    "{len} bytes, shorter than the {PROLOGUE_LEN}-byte prologue"
                )
            }
            PerfDataError::BadMagic(magic) => write!(f, "not PerfData (magic {magic:02x?})"),
            PerfDataError::BadByteOrder(order) => write!(f, "unknown byte order {order}"),
            PerfDataError::UnsupportedVersion { major, minor } => {
                write!(f, "PerfData version {major}.{minor}, only 2.x is read")
            }
            PerfDataError::NotAccessible => {
                write!(f, "the JVM has not made its counters accessible yet")
            }
            PerfDataError::BadEntry { index, offset } => {
                write!(f, "entry {index} at byte {offset} runs past the data")
            }
        }
    }
}

impl std::error::Error for PerfDataError {}

/// The prologue's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prologue {
    pub byte_order: ByteOrder,
    pub major: u8,
    pub minor: u8,
    /// Bytes of the file in use.
    pub used: usize,
    /// Offset of the first entry.
    pub entry_offset: usize,
    /// Entries the JVM has created; they are only ever appended.
    pub num_entries: usize,
}

/// What a counter measures (`PerfData::Units`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    None,
    Bytes,
    /// High-resolution ticks, at `sun.os.hrt.frequency` per second.
    Ticks,
    Events,
    String,
    Hertz,
    Unknown(u8),
}

impl Units {
    fn from_byte(byte: u8) -> Units {
        match byte {
            1 => Units::None,
            2 => Units::Bytes,
            3 => Units::Ticks,
            4 => Units::Events,
            5 => Units::String,
            6 => Units::Hertz,
            other => Units::Unknown(other),
        }
    }
}

/// One counter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A `jlong` scalar (type `J`).
    Long(i64),
    /// A byte vector (type `B`) up to its first NUL, as text.
    String(String),
    /// Any other type or shape, not read.
    Other,
}

/// One named entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    pub name: String,
    pub units: Units,
    pub value: Value,
    /// Absolute offset of the value in the file: a `Long` can be read again
    /// there with [`read_long`] without walking the entries.
    pub data_offset: usize,
}

/// A parsed PerfData file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfData {
    pub prologue: Prologue,
    pub counters: Vec<Counter>,
}

impl PerfData {
    /// The counter called `name`.
    pub fn get(&self, name: &str) -> Option<&Counter> {
        self.counters.iter().find(|c| c.name == name)
    }

    /// The `Long` value of `name`.
    pub fn long(&self, name: &str) -> Option<i64> {
        match self.get(name)?.value {
            Value::Long(value) => Some(value),
            _ => None,
        }
    }

    /// The `String` value of `name`.
    pub fn string(&self, name: &str) -> Option<&str> {
        match &self.get(name)?.value {
            Value::String(value) => Some(value),
            _ => None,
        }
    }
}

fn array<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn offset(order: ByteOrder, bytes: &[u8], at: usize) -> Option<usize> {
    usize::try_from(order.i32(array(bytes, at)?)).ok()
}

/// Reads and checks the prologue.
pub fn parse_prologue(bytes: &[u8]) -> Result<Prologue, PerfDataError> {
    if bytes.len() < PROLOGUE_LEN {
        return Err(PerfDataError::TooShort(bytes.len()));
    }
    let magic = array(bytes, 0).ok_or(PerfDataError::TooShort(bytes.len()))?;
    if magic != PERFDATA_MAGIC {
        return Err(PerfDataError::BadMagic(magic));
    }
    let byte_order = match bytes[4] {
        0 => ByteOrder::Big,
        1 => ByteOrder::Little,
        other => return Err(PerfDataError::BadByteOrder(other)),
    };
    let (major, minor) = (bytes[5], bytes[6]);
    if major != 2 {
        return Err(PerfDataError::UnsupportedVersion { major, minor });
    }
    if bytes[7] == 0 {
        return Err(PerfDataError::NotAccessible);
    }
    let field = |at| offset(byte_order, bytes, at).unwrap_or(0);
    Ok(Prologue {
        byte_order,
        major,
        minor,
        used: field(8),
        entry_offset: field(24),
        num_entries: field(28),
    })
}

/// Parses a whole PerfData file: the prologue, then every entry it counts.
pub fn parse(bytes: &[u8]) -> Result<PerfData, PerfDataError> {
    let prologue = parse_prologue(bytes)?;
    let order = prologue.byte_order;
    let mut counters = Vec::with_capacity(prologue.num_entries.min(bytes.len() / ENTRY_HEADER_LEN));
    let mut start = prologue.entry_offset;
    for index in 0..prologue.num_entries {
        let bad = PerfDataError::BadEntry {
            index,
            offset: start,
        };
        let counter = parse_entry(order, bytes, start).ok_or(bad.clone())?;
        counters.push(counter.0);
        start = counter.1;
    }
    Ok(PerfData { prologue, counters })
}

/// The entry at `start` and where the next one begins.
fn parse_entry(order: ByteOrder, bytes: &[u8], start: usize) -> Option<(Counter, usize)> {
    let header = bytes.get(start..start.checked_add(ENTRY_HEADER_LEN)?)?;
    let length = offset(order, header, 0)?;
    let end = start.checked_add(length)?;
    if length < ENTRY_HEADER_LEN || end > bytes.len() {
        return None;
    }
    let entry = &bytes[start..end];
    let name_offset = offset(order, entry, 4)?;
    let vector_length = offset(order, entry, 8)?;
    let (data_type, units) = (entry[12], Units::from_byte(entry[14]));
    let data_offset = offset(order, entry, 16)?;
    let name_bytes = entry.get(name_offset..)?;
    let name_end = memchr::memchr(0, name_bytes)?;
    let name = String::from_utf8_lossy(&name_bytes[..name_end]).into_owned();
    let data = entry.get(data_offset..)?;
    let value = match (data_type, vector_length) {
        (b'J', 0) => Value::Long(order.i64(array(data, 0)?)),
        (b'B', length) => {
            let vector = data.get(..length)?;
            let text = &vector[..memchr::memchr(0, vector).unwrap_or(vector.len())];
            Value::String(String::from_utf8_lossy(text).into_owned())
        }
        _ => Value::Other,
    };
    let counter = Counter {
        name,
        units,
        value,
        data_offset: start + data_offset,
    };
    Some((counter, end))
}

/// The `jlong` at `data_offset` (a [`Counter::data_offset`]), or `None` when
/// the bytes end before it.
pub fn read_long(bytes: &[u8], order: ByteOrder, data_offset: usize) -> Option<i64> {
    Some(order.i64(array(bytes, data_offset)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian file with one `J` entry named `a.b` = 7, laid out by
    /// hand from HotSpot's struct definitions.
    fn one_long() -> Vec<u8> {
        let mut bytes = vec![0xca, 0xfe, 0xc0, 0xc0, 1, 2, 0, 1];
        for field in [64i32, 0, 0, 0, 32, 1] {
            bytes.extend(field.to_le_bytes());
        }
        bytes.truncate(24);
        bytes.extend(32i32.to_le_bytes());
        bytes.extend(1i32.to_le_bytes());
        // entry: length 32, name at 20, scalar, 'J', flags, units Events, variability, data at 24
        bytes.extend(32i32.to_le_bytes());
        bytes.extend(20i32.to_le_bytes());
        bytes.extend(0i32.to_le_bytes());
        bytes.extend([b'J', 0, 4, 2]);
        bytes.extend(24i32.to_le_bytes());
        bytes.extend(b"a.b\0");
        bytes.extend(7i64.to_le_bytes());
        bytes
    }

    #[test]
    fn a_hand_made_entry_is_read() {
        let data = parse(&one_long()).unwrap();
        assert_eq!(data.long("a.b"), Some(7));
        assert_eq!(data.get("a.b").unwrap().units, Units::Events);
        assert_eq!(data.get("a.b").unwrap().data_offset, 56);
    }

    #[test]
    fn an_inaccessible_file_and_a_cut_entry_are_refused() {
        let mut bytes = one_long();
        bytes[7] = 0;
        assert_eq!(parse(&bytes), Err(PerfDataError::NotAccessible));
        let bytes = one_long();
        let cut = &bytes[..bytes.len() - 1];
        assert_eq!(
            parse(cut),
            Err(PerfDataError::BadEntry {
                index: 0,
                offset: 32
            })
        );
    }
}
