"""Reads for the grading pages: grading runs and scores (`runs`), calibration
(`calibration`)."""
