// Placeholder; the pluggable-transport base lives here.
