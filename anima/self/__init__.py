"""The self layer: the six blocks, proposals for the baseline, the autobiography, and her files
under self/ (state, memories, diary)."""
