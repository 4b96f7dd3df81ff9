//! CF time tests: behaviour, cftime as the oracle, and robustness (one test binary).

mod behaviour;
mod no_panic;
mod oracle;
