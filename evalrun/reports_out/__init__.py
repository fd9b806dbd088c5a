"""What evalrun writes for people and CI: terminal, JUnit, Markdown, GitHub, HTML."""
