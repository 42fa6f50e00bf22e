package taskpg

import "os"

func init() {
	if os.Getenv("NOCOPY") == "1" {
		copyThreshold = 1 << 30
	}
}
