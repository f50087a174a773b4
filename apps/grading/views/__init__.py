"""The grading pages: grading runs (`runs`) and expert calibration (`calibration`)."""
