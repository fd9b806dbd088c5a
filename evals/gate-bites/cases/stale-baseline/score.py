from evalrun import scorer

with scorer.check("totals add up") as c:
    c.equal(2 + 2, 4)

# New since the baseline was written.
with scorer.check("tax is rounded") as c:
    c.equal(round(10 * 1.25), 12)
