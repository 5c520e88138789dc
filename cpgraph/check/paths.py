"""Where the graph-path subject used to live: its names, importable from here as before (the subject is
cpgraph/check/subjects/paths.py, its records subjects/path_violation.py)."""

from __future__ import annotations

from cpgraph.check.subjects.path_violation import PathRun as PathRun, PathsRun as PathsRun, PathViolation as PathViolation
from cpgraph.check.subjects.paths import (
    DEFAULT_TOKEN_SIZES as DEFAULT_TOKEN_SIZES,
    MAX_DECODES as MAX_DECODES,
    PathDriver as PathDriver,
    check_paths as check_paths,
    minimise as minimise,
    random_config as random_config,
    random_step as random_step,
)

PathsReport = PathsRun  # the graph paths' part of the one report (report.py's CheckReport)

__all__ = ["DEFAULT_TOKEN_SIZES", "MAX_DECODES", "PathDriver", "PathRun", "PathViolation", "PathsReport", "PathsRun",
           "check_paths", "minimise", "random_config", "random_step"]
