"""What scorers report, in: the JSON report, TAP, JUnit XML, and the runner's rules applied to any of them."""
