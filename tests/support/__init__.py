"""Helpers shared by the test suites (`tests/<area>/`), importable as `support.<module>`:

- `paths`: where the repository, its examples, the built Rust examples and test scripts are;
- `ports`: free loopback ports, the one scheme every suite uses (safe under pytest-xdist);
- `processes`: Python programs run as subprocesses, examples and the launcher;
- `dataflows`: small dataflows run in-process, fed epoch by epoch, and their results;
- `cluster`: clusters of processes on a hostfile; `launched`: the launcher in the background;
- `generic`, `codec`, `keyforms`, `megaphone_programs`: helpers of one area each;
- `tracedirs`, `analysis_traces`, `timelines`, `kernel_inputs`, `devtools`: traces, analysis
  kernel inputs and a headless browser for the trace and analysis suites.
"""
