"""Grading runs, judgments, scores, expert judgments and calibration (DESIGN.md, "Domain
model"). It depends on runs and rubrics, never the other way. It holds no models yet and is
not an installed app; the package exists so that `.importlinter`'s contracts about it are
checked from the start."""
