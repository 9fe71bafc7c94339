"""Infrastructure: files, time, errors, the home, config, git, model backends, export and import.

Nothing here imports anything of anima above it."""
