//! The `java` launcher's `@argfiles` (JDK 9+, `libjli/args.c`), read back
//! from a running JVM's command line: `/proc/PID/cmdline` keeps `@file`,
//! the launcher expanded it in memory, so the GC logging options inside are
//! only seen by expanding it again, by the launcher's own rules.

/// Options the launcher takes the next argument of as their value
/// (`IsWhiteSpaceOption` in `java.c`): that argument is not the main class.
pub(super) const OPTIONS_WITH_VALUE: [&str; 17] = [
    "-cp",
    "-classpath",
    "--class-path",
    "-p",
    "--module-path",
    "--upgrade-module-path",
    "--add-modules",
    "--limit-modules",
    "--add-exports",
    "--add-opens",
    "--add-reads",
    "--patch-module",
    "--describe-module",
    "-d",
    "--source",
    "--module",
    "-m",
];

/// An argfile larger than this is not read (the launcher allows 2 GiB; GC
/// options sit in files of a few KiB).
pub(super) const MAX_ARGFILE_BYTES: u64 = 1 << 20;

/// Where the launcher's tokenizer is (`enum STATE` in `args.c`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    FindNext,
    InComment,
    InQuote,
    InEscape,
    SkipLeadWhitespace,
    InToken,
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t' | 0x0c)
}

/// The arguments in an argfile, as `nextToken` in `args.c` splits them:
/// whitespace separates; `'` or `"` quote, where spaces, tabs and `#` are
/// kept but a line end still ends the argument; in quotes a backslash
/// escapes (`\n`, `\r`, `\t`, `\f`, any other character as itself) and a
/// backslash before a line end continues the argument on the next line
/// after its leading whitespace; `#` outside quotes starts a comment to the
/// end of the line, and drops what was read of the argument it is in.
pub(super) fn argfile_arguments(text: &[u8]) -> Vec<String> {
    let mut arguments = Vec::new();
    let mut state = State::FindNext;
    let mut quote = b'"';
    // Pieces of the argument read so far (`parts`): their bytes and count,
    // since an empty piece still makes an argument.
    let mut parts: Vec<u8> = Vec::new();
    let mut pieces = 0usize;
    let mut anchor = 0;
    let mut at = 0;
    while at < text.len() {
        let mut byte = text[at];
        match state {
            State::FindNext | State::SkipLeadWhitespace => {
                while is_space(byte) {
                    at += 1;
                    let Some(&next) = text.get(at) else {
                        return arguments;
                    };
                    byte = next;
                }
                state = if state == State::FindNext {
                    State::InToken
                } else {
                    State::InQuote
                };
                anchor = at;
            }
            State::InEscape => {
                if byte == b'\n' || byte == b'\r' {
                    state = State::SkipLeadWhitespace;
                } else {
                    parts.push(match byte {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'f' => 0x0c,
                        other => other,
                    });
                    pieces += 1;
                    state = State::InQuote;
                }
                at += 1;
                anchor = at;
                continue;
            }
            State::InComment => {
                while byte != b'\n' && byte != b'\r' {
                    at += 1;
                    let Some(&next) = text.get(at) else {
                        return arguments;
                    };
                    byte = next;
                }
                at += 1;
                anchor = at;
                state = State::FindNext;
                continue;
            }
            State::InQuote | State::InToken => {}
        }
        let quoted = state == State::InQuote;
        match byte {
            b' ' | b'\t' | 0x0c if quoted => {}
            b' ' | b'\t' | 0x0c | b'\n' | b'\r' => {
                parts.extend_from_slice(&text[anchor..at]);
                arguments.push(String::from_utf8_lossy(&parts).into_owned());
                parts.clear();
                pieces = 0;
                state = State::FindNext;
            }
            b'#' if quoted => {}
            b'#' => {
                state = State::InComment;
                anchor = at + 1;
            }
            b'\\' if !quoted => {}
            b'\\' => {
                parts.extend_from_slice(&text[anchor..at]);
                pieces += 1;
                state = State::InEscape;
                anchor = at + 1;
            }
            b'\'' | b'"' if quoted && quote != byte => {}
            b'\'' | b'"' => {
                if anchor != at {
                    parts.extend_from_slice(&text[anchor..at]);
                    pieces += 1;
                }
                anchor = at + 1;
                if quoted {
                    state = State::InToken;
                } else {
                    quote = byte;
                    state = State::InQuote;
                }
            }
            _ => {}
        }
        at += 1;
    }
    if matches!(state, State::InToken | State::InQuote) {
        if anchor < text.len() {
            parts.extend_from_slice(&text[anchor..]);
            pieces += 1;
        }
        if pieces != 0 {
            arguments.push(String::from_utf8_lossy(&parts).into_owned());
        }
    }
    arguments
}

/// What the launcher has seen of the arguments so far (`checkArg`): once
/// the main class (or `-jar`'s jar, or `-m`'s module) is seen, the rest are
/// the application's, never expanded; `--disable-@files` stops expansion.
#[derive(Default)]
struct Seen {
    expecting_value: bool,
    application: bool,
    expansion_off: bool,
}

impl Seen {
    fn check(&mut self, argument: &str) {
        if argument.starts_with('-') {
            self.expecting_value = false;
            if OPTIONS_WITH_VALUE.contains(&argument) {
                // `-m` is followed by the main module, which ends the options.
                self.expecting_value = !matches!(argument, "--module" | "-m");
            } else if argument == "--disable-@files" {
                self.expansion_off = true;
            } else if argument.starts_with("--module=") {
                self.application = true;
            }
        } else {
            if !self.expecting_value {
                self.application = true;
            }
            self.expecting_value = false;
        }
    }
}

/// The launcher's arguments with its `@argfiles` expanded, as
/// `JLI_PreprocessArg` does: `@file` is replaced by the file's arguments
/// (not expanded again), `@@x` is the argument `@x`, `@` alone is itself;
/// nothing after the main class or `--disable-@files` is expanded. `read`
/// gives a file's bytes by the name written after `@`; a file it cannot read
/// (gone since the JVM started) leaves `@file` as it is.
pub(super) fn expand_argfiles(
    arguments: &[String],
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Vec<String> {
    let mut seen = Seen::default();
    let mut expanded = Vec::with_capacity(arguments.len());
    let mut rest = arguments.iter();
    expanded.extend(rest.next().cloned());
    for argument in rest {
        let file = argument.strip_prefix('@').filter(|file| !file.is_empty());
        match file {
            _ if seen.application => expanded.push(argument.clone()),
            Some(file) if !seen.expansion_off => {
                if file.starts_with('@') {
                    seen.check(file);
                    expanded.push(file.to_string());
                } else if let Some(text) = read(file) {
                    for argument in argfile_arguments(&text) {
                        seen.check(&argument);
                        expanded.push(argument);
                    }
                } else {
                    expanded.push(argument.clone());
                }
            }
            _ => {
                seen.check(argument);
                expanded.push(argument.clone());
            }
        }
    }
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(text: &str) -> Vec<String> {
        argfile_arguments(text.as_bytes())
    }

    /// The JDK's own test of the launcher's syntax
    /// (`test/jdk/tools/launcher/ArgFileSyntax.java`): each file's lines
    /// (written with `\n` line ends) and the arguments the launcher passed on.
    /// Where that test cannot check `\n` and `\r` in its output, the
    /// argument is asserted whole here, by `args.c`'s escape rules.
    #[test]
    fn argfiles_are_split_as_the_jdks_argfile_syntax_test_expects() {
        let cases: [(&[&str], &[&str]); 8] = [
            (&[], &[]),
            (
                &[
                    "# a couple of -X flags",
                    "-Xmx32m",
                    "-XshowSettings #inline comment",
                    r#"-Dpound.in.quote="This property contains #.""#,
                    "# add -version",
                    "-version",
                    "# trail comment",
                ],
                &[
                    "-Xmx32m",
                    "-XshowSettings",
                    "-Dpound.in.quote=This property contains #.",
                    "-version",
                ],
            ),
            (
                &[
                    r#"-cp "c:\\java lib\\all;\"#,
                    r#"     c:\\lib""#,
                    "-Xmx32m -XshowSettings",
                    "-version",
                ],
                &[
                    "-cp",
                    r"c:\java lib\all;c:\lib",
                    "-Xmx32m",
                    "-XshowSettings",
                    "-version",
                ],
            ),
            (
                &[
                    r#"-cp "c:\\open quote\\all;"#,
                    r#"     # c:\\lib""#,
                    r#"-Dmultiple.lines="line 1\nline 2\n\rline 3""#,
                    r#"-Dopen.quote="Open quote to EOL"#,
                    r#"-Dcontinue.with.leadingWS="Continue with\"#,
                    r"  \ leading WS.",
                    r#"-Dcontinue.without.leadingWS="Continue without \"#,
                    "   leading WS.",
                    r#"-Descape.seq="escaped chars: \"\a\b\c\f\t\v\9\6\23\82\28\377\477\278\287\n""#,
                    "-version",
                ],
                &[
                    "-cp",
                    r"c:\open quote\all;",
                    "-Dmultiple.lines=line 1\nline 2\n\rline 3",
                    "-Dopen.quote=Open quote to EOL",
                    "-Dcontinue.with.leadingWS=Continue with leading WS.",
                    "-Dcontinue.without.leadingWS=Continue without leading WS.",
                    "-Descape.seq=escaped chars: \"abc\x0c\tv96238228377477278287\n",
                    "-version",
                ],
            ),
            (
                &[
                    r#"-cp c:\"partial quote"\all"#,
                    "-Xmx32m -XshowSettings",
                    "-version",
                ],
                &[
                    "-cp",
                    r"c:\partial quote\all",
                    "-Xmx32m",
                    "-XshowSettings",
                    "-version",
                ],
            ),
            (
                &[
                    "-Xmx32m",
                    "-cp",
                    " # @cpfile should remains @cpfile",
                    "@cpfile",
                    "-version",
                ],
                &["-Xmx32m", "-cp", "@cpfile", "-version"],
            ),
            (
                &[
                    r#"-Dsingle.in.double="Mix 'single' in double""#,
                    r#"-Ddouble.in.single='Mix "double" in single'"#,
                    r"-Dsingle.in.single='Escape \'single\' in single'",
                    r#"-Ddouble.in.double="Escape \"double\" in double""#,
                ],
                &[
                    "-Dsingle.in.double=Mix 'single' in double",
                    "-Ddouble.in.single=Mix \"double\" in single",
                    "-Dsingle.in.single=Escape 'single' in single",
                    "-Ddouble.in.double=Escape \"double\" in double",
                ],
            ),
            (
                &[
                    "-Xmx32m\t-Xint\x0c-version",
                    r#"-Dcontinue.with.leadingws="Line1\"#,
                    " \t\x0ccontinue with \\f<ff> and \\t<tab>",
                ],
                &[
                    "-Xmx32m",
                    "-Xint",
                    "-version",
                    "-Dcontinue.with.leadingws=Line1continue with \x0c<ff> and \t<tab>",
                ],
            ),
        ];
        for (lines, expected) in cases {
            let file: String = lines.iter().map(|line| format!("{line}\n")).collect();
            assert_eq!(arguments(&file), expected, "{file}");
        }
        // Its bad case: the backslash escapes the closing quote.
        assert_eq!(
            arguments("-Dno.escape=\"Forgot to escape backslash\\\" -version\n"),
            ["-Dno.escape=Forgot to escape backslash\" -version"]
        );
        // By `args.c`'s state machine: `#` inside an unquoted argument starts
        // a comment and drops the argument; a file's last argument needs no
        // line end; an empty quoted argument counts, but not at the very end.
        assert_eq!(arguments("-Dx=a#b\n-Dy='a#b'"), ["-Dy=a#b"]);
        assert_eq!(arguments("'' x\n''"), ["", "x"]);
    }

    fn strings(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn argfiles_are_expanded_until_the_main_class_or_disable_files() {
        let read = |name: &str| match name {
            "gc.opts" => Some(b"-Xlog:gc*:file=gc.log -cp app.jar".to_vec()),
            "main.args" => Some(b"com.acme.Main".to_vec()),
            _ => None,
        };
        assert_eq!(
            expand_argfiles(&strings("java @gc.opts @main.args @gc.opts"), &read),
            strings("java -Xlog:gc*:file=gc.log -cp app.jar com.acme.Main @gc.opts")
        );
        // `@@` escapes, `@` alone is an argument, a missing file stays.
        assert_eq!(
            expand_argfiles(&strings("java -Dx=1 @@gc.opts @ @gone Main"), &read),
            strings("java -Dx=1 @gc.opts @ @gone Main")
        );
        // An option's value is not the main class; -jar's jar is.
        assert_eq!(
            expand_argfiles(&strings("java -cp @main.args @gc.opts"), &read),
            strings("java -cp com.acme.Main -Xlog:gc*:file=gc.log -cp app.jar")
        );
        assert_eq!(
            expand_argfiles(&strings("java -jar app.jar @gc.opts"), &read),
            strings("java -jar app.jar @gc.opts")
        );
        assert_eq!(
            expand_argfiles(&strings("java --disable-@files @gc.opts Main"), &read),
            strings("java --disable-@files @gc.opts Main")
        );
    }
}
