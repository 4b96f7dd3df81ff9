//! Hints: what to do after an error or a warning, in one place. A [`Hint`] is what the
//! situation calls for; its words are chosen by the options the command that ran takes (its
//! clap definition), so a hint never names an option the command lacks (a test walks every
//! hint for every command). Libraries never name options: their errors are matched here.

use clap::CommandFactory;

use crate::flags::Cli;

/// What a situation calls for; [`Hint::text`] words it for one command.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Hint {
    /// A gap along the concatenation coordinate.
    Gap,
    /// Files that overlap along the concatenation coordinate.
    Overlap,
    /// A strict build that would leave something out.
    Strict,
    /// Several files and no way to combine them; the unlimited dimension they share, if any.
    HowToCombine(Option<String>),
    /// An allowed prefix that is not one.
    BadPrefix,
    /// References that point outside the prefixes they record.
    Tampered,
    /// A source outside the allowed prefixes; the prefixes the references record.
    NotAllowed(Vec<String>),
    /// A source that changed since the references were built.
    Stale,
    /// An output in a directory that does not exist.
    CreateDirectory(String),
    /// An object that is not there, named like a prefix without its trailing `/`.
    PrefixWithoutSlash(String),
    /// Arrays left referenced in small pieces: the inlining limits.
    InlineLimits,
    /// A reference file too large to open quickly: the Icechunk format.
    IcechunkFormat,
    /// A sync refused because recorded sources are gone.
    AllowRemoval,
}

/// Whether `cmd` takes the long option `flag` (`--name`).
fn takes(cmd: &clap::Command, flag: &str) -> bool {
    let name = flag.trim_start_matches("--");
    cmd.get_arguments().any(|a| a.get_long() == Some(name))
}

/// The clap definition of the subcommand `name`.
fn command(name: &str) -> Option<clap::Command> {
    Cli::command().find_subcommand(name).cloned()
}

impl Hint {
    /// The hint that follows the error `e`, where one does.
    pub(crate) fn of(e: &anyhow::Error) -> Option<Hint> {
        use vzarr_build::{BuildError, Unwritable};
        use vzarr_source::SourceError;
        for cause in e.chain() {
            if let Some(b) = cause.downcast_ref::<BuildError>() {
                match b {
                    BuildError::Strict { .. } | BuildError::StrictPlan { .. } => {
                        return Some(Hint::Strict);
                    }
                    // `BuildError::Plan` is transparent: the chain goes on from the planner
                    // error's own cause, so the planner error is only found in here.
                    BuildError::Plan(p) => {
                        if let Some(h) = Hint::of_plan(p) {
                            return Some(h);
                        }
                    }
                    BuildError::HowToCombine { suggestion, .. } => {
                        return Some(Hint::HowToCombine(suggestion.clone()));
                    }
                    BuildError::Unwritable {
                        why: Unwritable::NoDirectory(dir),
                        ..
                    } => return Some(Hint::CreateDirectory(dir.clone())),
                    BuildError::Removed { .. } => return Some(Hint::AllowRemoval),
                    _ => {}
                }
            }
            if let Some(h) = cause
                .downcast_ref::<vzarr_plan::PlanError>()
                .and_then(Hint::of_plan)
            {
                return Some(h);
            }
            if let Some(vzarr_read::ReadError::Prefix(_)) =
                cause.downcast_ref::<vzarr_read::ReadError>()
            {
                return Some(Hint::BadPrefix);
            }
            match source_error(cause) {
                Some(SourceError::NotAllowed(n)) => {
                    return Some(match n.why {
                        vzarr_source::Refusal::NotRecorded => Hint::Tampered,
                        _ => Hint::NotAllowed(n.recorded.clone()),
                    });
                }
                Some(SourceError::Stale { .. }) => return Some(Hint::Stale),
                Some(SourceError::NotFound { url }) if looks_like_prefix(url) => {
                    return Some(Hint::PrefixWithoutSlash(url.clone()));
                }
                _ => {}
            }
        }
        None
    }

    /// The hint that follows the planner error `e`, where one does.
    fn of_plan(e: &vzarr_plan::PlanError) -> Option<Hint> {
        match e {
            vzarr_plan::PlanError::Gap(_) => Some(Hint::Gap),
            vzarr_plan::PlanError::Overlap(_) => Some(Hint::Overlap),
            _ => None,
        }
    }

    /// The hint in words for the subcommand `name` (`build`, `upgrade`, ...), naming only
    /// options it takes; `None` when there is nothing to say there.
    pub(crate) fn text_for(&self, name: &str) -> Option<String> {
        self.text(&command(name)?)
    }

    /// The hint in words for the command `cmd`, naming only options it takes; `None` when
    /// there is nothing to say there.
    pub(crate) fn text(&self, cmd: &clap::Command) -> Option<String> {
        let has = |flag: &str| takes(cmd, flag);
        Some(match self {
            Hint::Gap if has("--allow-gaps") => "pass --allow-gaps to accept gaps".into(),
            Hint::Gap => return None,
            Hint::Overlap if has("--order-by") => "leave out a file given twice; if the \
                dimension's coordinate does not tell the files apart (the same values in \
                each), order them by another variable along the dimension with --order-by VAR"
                .into(),
            Hint::Overlap => "leave out a file given twice".into(),
            Hint::Strict if has("--strict") => {
                "--strict is set: leave it out to build without them".into()
            }
            Hint::Strict => return None,
            Hint::HowToCombine(suggestion) => {
                let mut ways = Vec::new();
                if has("--concat-dim") {
                    ways.push(match suggestion {
                        Some(d) => {
                            format!("--concat-dim {d} (the unlimited dimension of every file)")
                        }
                        None => "--concat-dim DIM".into(),
                    });
                }
                if has("--new-dim") {
                    ways.push("--new-dim NAME to stack them".into());
                }
                if ways.is_empty() {
                    return None;
                }
                format!("combine them with {}", ways.join(", or "))
            }
            Hint::BadPrefix if has("--allow-prefix") => {
                "check the --allow-prefix values (and VZARR_ALLOW_PREFIXES)".into()
            }
            Hint::BadPrefix => "check the prefixes in VZARR_ALLOW_PREFIXES".into(),
            Hint::Tampered => "the references point outside the prefixes they record: they may \
                have been tampered with"
                .into(),
            Hint::NotAllowed(recorded) => {
                let allow = if has("--allow-prefix") {
                    "allow them with --allow-prefix (or VZARR_ALLOW_PREFIXES)"
                } else {
                    "allow them in VZARR_ALLOW_PREFIXES"
                };
                let trust = if has("--trust-references") {
                    ", or pass --trust-references if you made these references"
                } else {
                    ""
                };
                if recorded.is_empty() {
                    format!("the sources' prefix is not allowed: {allow}{trust}")
                } else {
                    format!(
                        "the references record their sources under {}: {allow}{trust}",
                        recorded.join(", ")
                    )
                }
            }
            Hint::Stale if has("--ignore-stale") => "pass --ignore-stale to read anyway".into(),
            Hint::Stale => "the source changed since the references were built: build them \
                again from the sources as they are now"
                .into(),
            Hint::CreateDirectory(dir) => format!("create it first (mkdir -p {dir})"),
            Hint::PrefixWithoutSlash(url) => {
                format!("to take every file under the prefix {url}, end it with /: {url}/")
            }
            Hint::InlineLimits if has("--inline-max") && has("--inline-total") => {
                "--inline-max SIZE (per array) and --inline-total SIZE (per build) raise the \
                 limits"
                    .into()
            }
            Hint::InlineLimits => return None,
            Hint::IcechunkFormat if has("--format") => "write --format icechunk instead".into(),
            Hint::IcechunkFormat => return None,
            Hint::AllowRemoval if has("--allow-removal") => {
                "if they were removed on purpose, pass --allow-removal to rebuild without them"
                    .into()
            }
            Hint::AllowRemoval => return None,
        })
    }
}

/// The byte layer's error `cause` is, or wraps without a word of its own (a transparent
/// wrapper forwards its inner error's cause, so the inner error is not in the chain).
fn source_error<'a>(
    cause: &'a (dyn std::error::Error + 'static),
) -> Option<&'a vzarr_source::SourceError> {
    use vzarr_build::BuildError;
    use vzarr_scan::ScanError;
    if let Some(e) = cause.downcast_ref::<vzarr_source::SourceError>() {
        return Some(e);
    }
    let scan = match cause.downcast_ref::<BuildError>() {
        Some(BuildError::Scan(s)) => Some(s),
        _ => cause.downcast_ref::<ScanError>(),
    };
    match scan {
        Some(ScanError::Source(e)) => Some(e),
        _ => None,
    }
}

/// Whether an object URL that is not there looks like a prefix written without its trailing
/// `/` (no extension in its last segment).
fn looks_like_prefix(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    scheme != "file"
        && !url.ends_with('/')
        && rest
            .rsplit('/')
            .next()
            .is_some_and(|last| !last.is_empty() && !last.contains('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hint, with sample values.
    fn every_hint() -> Vec<Hint> {
        vec![
            Hint::Gap,
            Hint::Overlap,
            Hint::Strict,
            Hint::HowToCombine(None),
            Hint::HowToCombine(Some("time".into())),
            Hint::BadPrefix,
            Hint::Tampered,
            Hint::NotAllowed(vec![]),
            Hint::NotAllowed(vec!["/data/archive".into()]),
            Hint::Stale,
            Hint::CreateDirectory("/no/such/dir".into()),
            Hint::PrefixWithoutSlash("s3://bucket/dir".into()),
            Hint::InlineLimits,
            Hint::IcechunkFormat,
            Hint::AllowRemoval,
        ]
    }

    /// The long options (`--name`) a text names.
    fn options_named(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let b = text.as_bytes();
        let mut i = 0;
        while let Some(k) = text[i..].find("--") {
            let start = i + k;
            let mut end = start + 2;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'-') {
                end += 1;
            }
            if end > start + 2 {
                out.push(text[start..end].to_string());
            }
            i = end.max(start + 2);
        }
        out
    }

    #[test]
    fn every_hint_names_only_options_the_command_takes() {
        let cli = Cli::command();
        let mut checked = 0;
        for cmd in cli.get_subcommands() {
            for hint in every_hint() {
                let Some(text) = hint.text(cmd) else { continue };
                for flag in options_named(&text) {
                    assert!(
                        takes(cmd, &flag),
                        "the hint {hint:?} for `vzarr {}` names {flag}, which it does not take: \
                         {text}",
                        cmd.get_name()
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "{checked} options checked");
        // The finding: `upgrade --rescan` hit a gap and was told of an option it lacked.
        let upgrade = command("upgrade").unwrap();
        assert!(takes(&upgrade, "--allow-gaps"));
        assert_eq!(
            Hint::Gap.text(&upgrade).as_deref(),
            Some("pass --allow-gaps to accept gaps")
        );
        // A command without the option gets no hint naming it.
        let cat = command("cat").unwrap();
        assert_eq!(Hint::Gap.text(&cat), None);
        assert!(!Hint::Stale.text(&upgrade).unwrap().contains("--"));
    }

    #[test]
    fn the_check_can_fail() {
        assert_eq!(
            options_named("pass --allow-gaps, or --order-by VAR; -- not one"),
            ["--allow-gaps", "--order-by"]
        );
        assert!(!takes(&command("cat").unwrap(), "--allow-gaps"));
    }

    #[test]
    fn every_command_name_is_a_subcommand() {
        for name in crate::flags::Command::NAMES {
            assert!(command(name).is_some(), "{name}");
        }
        assert_eq!(
            Cli::command().get_subcommands().count(),
            crate::flags::Command::NAMES.len()
        );
    }

    #[test]
    fn prefixes_without_their_slash_are_recognised() {
        assert!(looks_like_prefix("s3://bucket/archive"));
        assert!(!looks_like_prefix("s3://bucket/archive/"));
        assert!(!looks_like_prefix("s3://bucket/archive/tas.nc"));
        assert!(!looks_like_prefix("/data/archive"));
        assert!(!looks_like_prefix("file:///data/archive"));
    }
}
