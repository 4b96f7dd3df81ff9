//! The commands of the README and the user guide (`docs/*.md`) parse as written: every
//! `vzarr ...` line of their ```sh blocks with this binary's own flag parser, and every
//! `scripts/...` they run exists.

use std::path::{Path, PathBuf};

use clap::Parser;

use crate::flags::Cli;

/// The README and the guide's pages.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ is readable").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    out.extend(pages);
    out
}

/// The lines of the ```sh blocks of a Markdown text, continuation lines joined, with the
/// line number each starts on.
fn sh_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && info.trim() == "sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        joined.push_str(line.trim());
        match joined.strip_suffix('\\') {
            Some(head) => pending = Some((start, format!("{} ", head.trim_end()))),
            None => out.push((start, joined)),
        }
    }
    out
}

/// Splits a shell line into commands of words: quotes and backslashes as the shell reads
/// them, `#` starting a comment, `;`, `&&`, `||` and `|` between commands. Variables are
/// left as written.
fn commands(line: &str) -> Vec<Vec<String>> {
    let mut cmds = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    w.push(d);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                w.push(e);
                            }
                        }
                        _ => w.push(d),
                    }
                }
            }
            '\\' => {
                if let Some(e) = chars.next() {
                    word.get_or_insert_with(String::new).push(e);
                }
            }
            '#' if word.is_none() => break,
            // `2>&1`, `>&2`: part of a redirection, not a command separator.
            '&' if word.as_deref().is_some_and(|w| w.ends_with('>')) => {
                word.get_or_insert_with(String::new).push(c);
            }
            ';' | '&' | '|' => {
                if let Some(w) = word.take() {
                    cmds.last_mut().expect("one command at least").push(w);
                }
                if matches!(chars.peek(), Some('&' | '|')) {
                    chars.next();
                }
                cmds.push(Vec::new());
            }
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    cmds.last_mut().expect("one command at least").push(w);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(w) = word {
        cmds.last_mut().expect("one command at least").push(w);
    }
    // Redirections (`> file`, `2>&1`) are the shell's, not the command's.
    for c in &mut cmds {
        let mut kept = Vec::with_capacity(c.len());
        let mut words = c.drain(..);
        while let Some(w) = words.next() {
            let op = w.trim_start_matches(|ch: char| ch.is_ascii_digit());
            if op.starts_with('>') || op.starts_with('<') {
                if op.trim_start_matches(['>', '<', '&']).is_empty() && !op.ends_with('&') {
                    words.next(); // The target is the next word.
                }
                continue;
            }
            kept.push(w);
        }
        drop(words);
        *c = kept;
    }
    cmds.retain(|c| !c.is_empty());
    // Leading variable assignments (`NAME=value vzarr ...`) are the environment's.
    for c in &mut cmds {
        let n = c
            .iter()
            .take_while(|w| {
                w.split_once('=').is_some_and(|(name, _)| {
                    !name.is_empty()
                        && name
                            .chars()
                            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                })
            })
            .count();
        c.drain(..n);
    }
    cmds.retain(|c| !c.is_empty());
    cmds
}

#[test]
fn the_shell_reader_splits_as_the_shell_does() {
    assert_eq!(
        commands(r#"A=1 vzarr cat t.json 'tas[0:3,0,:]' --json  # a comment"#),
        vec![vec!["vzarr", "cat", "t.json", "tas[0:3,0,:]", "--json"]]
    );
    assert_eq!(
        commands(r#"mkdir -p x && echo "$PWD/a b" >> f; scripts/demo | tee log"#),
        vec![
            vec!["mkdir", "-p", "x"],
            vec!["echo", "$PWD/a b"],
            vec!["scripts/demo"],
            vec!["tee", "log"],
        ]
    );
    assert_eq!(
        commands("vzarr inspect f.nc --json > out.json 2>&1"),
        vec![vec!["vzarr", "inspect", "f.nc", "--json"]]
    );
    assert_eq!(
        sh_lines("text\n```sh\nvzarr build a \\\n  -o b.json\n```\n```python\nx\n```\n"),
        vec![(3, "vzarr build a -o b.json".to_string())]
    );
}

#[test]
fn every_documented_command_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    let mut parsed = 0;
    let mut per_doc = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("readable document");
        let name = doc.strip_prefix(root).unwrap_or(&doc).display().to_string();
        let mut here = 0;
        for (line_no, line) in sh_lines(&text) {
            for cmd in commands(&line) {
                let program = cmd[0].as_str();
                if program == "vzarr" {
                    here += 1;
                    if let Err(e) = Cli::try_parse_from(&cmd) {
                        failures.push(format!("{name}:{line_no}: {line}\n{e}"));
                    }
                } else if let Some(script) = program.strip_prefix("scripts/") {
                    let path = root.join("scripts").join(script);
                    if !path.is_file() {
                        failures.push(format!("{name}:{line_no}: no script {program}"));
                    }
                }
            }
        }
        parsed += here;
        per_doc.push((name, here));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The extraction itself works: the guide is full of commands.
    assert!(
        parsed >= 40,
        "only {parsed} vzarr commands found: {per_doc:?}"
    );
    for page in [
        "README.md",
        "docs/cli.md",
        "docs/combining.md",
        "docs/verify.md",
    ] {
        assert!(
            per_doc.iter().any(|(n, k)| n == page && *k > 0),
            "no vzarr command found in {page}: {per_doc:?}"
        );
    }
}
