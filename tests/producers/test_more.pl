# A real Test::More script for tests/reports_in/test_format_tap.py: a plan, a failure with
# diag, a subtest, a skip, a TODO, a repeated name, and BAIL_OUT when BAIL=1.
use strict;
use warnings;
use Test::More tests => 6;

ok(1, 'first passes');
is(1 + 1, 3, 'math is off') or diag("the adder is broken");
subtest 'grouped' => sub {
    plan tests => 2;
    ok(1, 'inner one');
    ok(1, 'inner two');
};
BAIL_OUT('db gone') if $ENV{BAIL};
SKIP: {
    skip 'no network', 1;
    ok(1, 'network');
}
TODO: {
    local $TODO = 'not yet';
    ok(0, 'future feature');
}
ok(1, 'first passes');
