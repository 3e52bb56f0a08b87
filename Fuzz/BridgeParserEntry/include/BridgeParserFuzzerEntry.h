// Intentionally empty: this target only provides the program entry point (see entry.c).
