"""Reports, plots and report exports over every other app (docs/architecture.md, "Layout").
It reads every app and no app imports it; the statistics it reports are computed by the
pure `stats` package, so the reports here hold tables, figures and their wording."""
