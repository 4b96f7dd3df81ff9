//! Mutants.
