// Placeholder; the obfs4 client lives here.
