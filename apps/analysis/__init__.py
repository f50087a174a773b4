"""Statistics, reports, plots and report exports over every other app (docs/architecture.md,
"Layout"). It reads every app and no app imports it. It holds no code yet and is not an
installed app; the package exists so that `.importlinter`'s contract that nothing imports
it is checked from the start."""
