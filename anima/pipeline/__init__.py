"""Pool B, the nervous system: queues, events in, rhythm, routes, dispatch, metrics."""
