//! Parsing a check's output into test ids and their states (being built: issue 5).
