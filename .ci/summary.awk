# One line closing CI: every test binary's result lines summed over both
# cargo runs, then the distinct tests among them. The library's unit tests
# run in both runs (default features, then --features etcd), so the sum
# counts each of them twice: a test is told apart by its name and the
# source its binary was built from (`Running unittests src/lib.rs (...)`,
# `Running tests/cli/main.rs (...)`), which both builds share.
/^ *Running / { bin = ($2 == "unittests") ? $3 : $2 }
/^ *Doc-tests / { bin = "doc-tests " $2 }
/^test result:/ { p += $4; f += $6; i += $8 }
# Unanchored: a child process's unfinished stderr line may precede it.
match($0, /test [^ ]+ \.\.\. ok/) {
    name = substr($0, RSTART + 5, RLENGTH - 12)
    if (seen[bin SUBSEP name]++ == 0) {
        distinct++
    } else if (seen[bin SUBSEP name] == 2) {
        twice++
    }
}
END {
    printf "summary: %d passed, %d failed, %d skipped; %d distinct tests passed, %d of them in both runs\n", \
        p, f, i, distinct, twice
}
