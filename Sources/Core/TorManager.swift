// Placeholder; the tor core manager lives here.
