// Package racedetector tells whether the test binary was built with the race
// detector, for the tests whose cost it multiplies beyond use: SQLite's
// driver is Go, so under the detector the database engine itself is
// instrumented, and its work costs some thirty times as much.
package racedetector
