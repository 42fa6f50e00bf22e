# Each target is a step of CI (.ci/run STEP): `make ci` runs them all, as
# CI does on a clean clone. `make test` is README's test command with the
# servers the tests start themselves; CONTRIBUTING.md says what each runs.
.PHONY: ci setup fmt vet lint test heavy test-all soak fuzz bench-smoke

ci:
	.ci/run

setup:
	.ci/run setup

fmt:
	.ci/run fmt

vet:
	.ci/run vet

lint:
	.ci/run lint

test:
	.ci/run test

heavy:
	.ci/run heavy

# test-all: README's test command, then the heavy tests.
test-all:
	.ci/run test heavy

soak:
	.ci/run soak

fuzz:
	.ci/run fuzz

bench-smoke:
	.ci/run bench
