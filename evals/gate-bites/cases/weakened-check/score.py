from evalrun import scorer

# Used to make four assertions; three were commented out.
with scorer.check("totals add up") as c:
    c.equal(2 + 2, 4)
