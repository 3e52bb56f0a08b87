// Placeholder; the bridge-line model lives here.
