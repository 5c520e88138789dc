"""Design review: a TOML design of the CP graph runner, proved, diffed, planned and simulated."""
