"""What makes text from a cluster safe to print and to write: credentials masked
(``redact``), control characters and escape sequences removed (``sanitize``), names made
safe as file names (``filenames``)."""
