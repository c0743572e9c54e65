"""The emulated domain: launchd's behaviour over real processes, with its own clock (a test
double off macOS, and the default there). `emulator.EmulatedDomain` speaks launchd's verbs (the
`Launchd` protocol); `state` is its file, `info` what its `print` says, `plist` the refusals it
makes at bootstrap, `clock` the span `lanekit emulator tick` drives it through."""
