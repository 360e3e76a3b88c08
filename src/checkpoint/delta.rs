//! A record's change against the one written before it, event-sized: a
//! live stream's record is about 2 KB, of which a second's pauses change a
//! few dozen bytes (offsets, counts, sums, times).
//!
//! Both records are taken as JSON values and their leaves (scalars and
//! empty containers) numbered depth first, object keys in order. When both
//! have the same shape (the same keys, the same array lengths), the change
//! is a flat list of pairs: a code, `2 * gap + add` where `gap` counts the
//! unchanged leaves skipped since the last changed one, and the leaf's new
//! value, or with `add` the difference from the old one: a number to add
//! (integers, and floats when the sum is exact) or, for a string,
//! `[kept, tail]`: its first `kept` bytes followed by `tail`. Whichever is
//! shorter is written. A change of shape (a new pause series, an error kind)
//! is not a delta: the record is written in full.
//!
//! The writer's base is `serde_json::to_value` of what it wrote; the
//! replay's is the same of what it read back, which is equal because every
//! record round-trips through JSON (object keys sorted: serde_json is built
//! without `preserve_order`).

use anyhow::{bail, Context, Result};
use serde_json::{Number, Value};

/// The change from `old` to `new`; `None` when their shapes differ.
pub fn diff(old: &Value, new: &Value) -> Option<Vec<Value>> {
    let mut delta = Delta::default();
    delta.walk(old, new).then_some(delta.ops)
}

#[derive(Default)]
struct Delta {
    ops: Vec<Value>,
    /// Leaves seen, and the number of the last changed one plus one.
    leaf: u64,
    last: u64,
}

impl Delta {
    /// Compares `old` and `new` leaf by leaf; false on a change of shape.
    fn walk(&mut self, old: &Value, new: &Value) -> bool {
        match (old, new) {
            (Value::Object(a), Value::Object(b)) if !a.is_empty() || !b.is_empty() => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && self.walk(va, vb))
            }
            (Value::Array(a), Value::Array(b)) if !a.is_empty() || !b.is_empty() => {
                a.len() == b.len() && a.iter().zip(b).all(|(va, vb)| self.walk(va, vb))
            }
            (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_))
                if !is_leaf(old) || !is_leaf(new) =>
            {
                false
            }
            _ => {
                if old != new {
                    self.change(old, new);
                }
                self.leaf += 1;
                true
            }
        }
    }

    fn change(&mut self, old: &Value, new: &Value) {
        let gap = self.leaf - self.last;
        self.last = self.leaf + 1;
        let (add, value) = match difference(old, new) {
            Some(d) if json_len(&d) < json_len(new) => (1, d),
            _ => (0, new.clone()),
        };
        self.ops.push(Value::from(2 * gap + add));
        self.ops.push(value);
    }
}

/// A scalar, or an empty object or array.
fn is_leaf(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(list) => list.is_empty(),
        _ => true,
    }
}

fn json_len(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        other => other.to_string().len(),
    }
}

/// What [`add`] turns `old` into `new` with, when there is such a thing.
fn difference(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(a), Some(b)) = (integer(a), integer(b)) {
                return i64::try_from(b - a).ok().map(Value::from);
            }
            shortest_float_difference(a.as_f64()?, b.as_f64()?).map(Value::Number)
        }
        (Value::String(a), Value::String(b)) => {
            let mut kept = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
            while !b.is_char_boundary(kept) {
                kept -= 1;
            }
            Some(Value::from(vec![
                Value::from(kept),
                Value::from(&b[kept..]),
            ]))
        }
        _ => None,
    }
}

/// The difference with the fewest significant digits that turns `a` into
/// exactly `b` when added to it, as the replay adds. A float sum grown by a
/// pause (`0.12198000000000006` after `0.11877000000000006`) is written as
/// that pause (`0.00321`), not as the 17 digits of `b - a`: those digits
/// were most of what deflate could not shrink in a live stream's checkpoint.
fn shortest_float_difference(a: f64, b: f64) -> Option<Number> {
    let d = b - a;
    if !d.is_finite() {
        return None;
    }
    (1..=17)
        .filter_map(|digits| format!("{d:.*e}", digits - 1).parse::<f64>().ok())
        .find(|&candidate| (a + candidate).to_bits() == b.to_bits())
        .and_then(Number::from_f64)
}

/// An integer, as neither float nor out of range.
fn integer(number: &Number) -> Option<i128> {
    number
        .as_u64()
        .map(i128::from)
        .or_else(|| number.as_i64().map(i128::from))
}

/// `old` with the difference `d` applied.
fn add(old: &Value, d: &Value) -> Result<Value> {
    match (old, d) {
        (Value::Number(a), Value::Number(d)) => {
            if let (Some(a), Some(d)) = (integer(a), integer(d)) {
                let sum = a + d;
                return Ok(match u64::try_from(sum) {
                    Ok(n) => Value::from(n),
                    Err(_) => Value::from(i64::try_from(sum).context("integer out of range")?),
                });
            }
            let sum = a.as_f64().context("not a number")? + d.as_f64().context("not a number")?;
            Number::from_f64(sum)
                .map(Value::Number)
                .context("not a finite number")
        }
        (Value::String(a), Value::Array(d)) => {
            let [Value::Number(kept), Value::String(tail)] = d.as_slice() else {
                bail!("not a string change");
            };
            let kept = kept
                .as_u64()
                .and_then(|k| a.get(..usize::try_from(k).ok()?))
                .context("string change past the end")?;
            Ok(Value::from(format!("{kept}{tail}")))
        }
        _ => bail!("a change that does not fit its leaf"),
    }
}

/// Applies the change `ops` (from [`diff`]) to `base`.
pub fn apply(base: &mut Value, ops: &[Value]) -> Result<()> {
    let mut leaves = Vec::new();
    collect(base, &mut leaves);
    let mut next = 0usize;
    for pair in ops.chunks(2) {
        let [code, value] = pair else {
            bail!("an odd number of entries");
        };
        let code = code.as_u64().context("not a code")?;
        let index = usize::try_from(code / 2)
            .ok()
            .and_then(|gap| next.checked_add(gap))
            .context("past the last leaf")?;
        let leaf = leaves.get_mut(index).context("past the last leaf")?;
        **leaf = if code % 2 == 1 {
            add(leaf, value)?
        } else {
            value.clone()
        };
        next = index + 1;
    }
    Ok(())
}

fn collect<'a>(value: &'a mut Value, leaves: &mut Vec<&'a mut Value>) {
    if is_leaf(value) {
        leaves.push(value);
        return;
    }
    match value {
        Value::Object(map) => map.values_mut().for_each(|v| collect(v, leaves)),
        Value::Array(list) => list.iter_mut().for_each(|v| collect(v, leaves)),
        _ => unreachable!("scalars are leaves"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_delta_applied_to_the_old_value_gives_the_new_one() {
        let old = json!({"offset": 4724, "hash": 17857070280400567209u64, "sum": 0.07061999999999999,
            "at": "2026-12-02T06:46:52.080Z", "labels": {}, "buckets": [0, 0, 22], "missing": null,
            "neg": -3, "name": "G1 é"});
        let new = json!({"offset": 4790, "hash": 12022973730255937539u64, "sum": 0.07061999999999999 + 0.00321,
            "at": "2026-12-02T06:46:53.110Z", "labels": {}, "buckets": [0, 0, 25], "missing": 7.5,
            "neg": 2, "name": "G1 è"});
        let ops = diff(&old, &new).unwrap();
        let mut replayed = old.clone();
        apply(&mut replayed, &ops).unwrap();
        assert_eq!(replayed, new);
        // Smaller than the new value: the offset as +66, the time as its tail.
        let text = serde_json::to_string(&ops).unwrap();
        assert!(
            text.contains(",66,") && text.contains(r#"[18,"3.110Z"]"#),
            "{text}"
        );
        assert!(diff(&old, &old).unwrap().is_empty());
    }

    #[test]
    fn a_float_sum_grown_by_a_pause_is_written_as_the_pause() {
        // Sums as the model builds them, one pause at a time.
        let mut sum = 0.11877000000000006f64;
        for pause in [0.00321, 0.0154, 0.00321, 0.1706065, 0.0001215, 0.00321] {
            let grown = sum + pause;
            let ops = diff(&json!({"sum": sum}), &json!({"sum": grown})).unwrap();
            assert_eq!(ops, [json!(1), json!(pause)], "{sum} + {pause}");
            let mut replayed = json!({"sum": sum});
            apply(&mut replayed, &ops).unwrap();
            assert_eq!(replayed["sum"].as_f64().unwrap().to_bits(), grown.to_bits());
            sum = grown;
        }
        // Two pauses in one checkpoint: still exact, whatever is written.
        let grown = sum + 0.00321 + 0.0154;
        let ops = diff(&json!({"sum": sum}), &json!({"sum": grown})).unwrap();
        let mut replayed = json!({"sum": sum});
        apply(&mut replayed, &ops).unwrap();
        assert_eq!(replayed["sum"].as_f64().unwrap().to_bits(), grown.to_bits());
    }

    #[test]
    fn a_change_of_shape_is_no_delta() {
        let old = json!({"errors": {}, "series": [1]});
        assert!(diff(&old, &json!({"errors": {"missing": 1}, "series": [1]})).is_none());
        assert!(diff(&old, &json!({"errors": {}, "series": [1, 2]})).is_none());
        assert!(diff(&old, &json!({"errors": {}, "series": [1], "new": 1})).is_none());
        assert!(diff(&json!({"a": null}), &json!({"a": {"b": 1}})).is_none());
    }

    #[test]
    fn a_delta_that_does_not_fit_is_an_error() {
        let mut value = json!({"a": 1, "b": "x"});
        assert!(apply(&mut value, &[json!(4), json!(1)]).is_err());
        assert!(apply(&mut value, &[json!(3), json!([5, "y"])]).is_err());
        assert!(apply(&mut value, &[json!(1)]).is_err());
    }
}
