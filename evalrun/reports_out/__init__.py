"""What evalrun reports, out: the terminal, JUnit XML, Markdown, GitHub annotations and step summary."""
