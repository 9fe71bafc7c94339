"""Pool A, the self-stream: now.md and its bookkeeping, the two translators (internalize,
externalize), the echo guard, the nightly consolidate, history import, and the heartbeat
that runs her day through both pools (`anima tick`)."""
