//! The scriptable CLI: one module per subcommand family, text or `--json`.
