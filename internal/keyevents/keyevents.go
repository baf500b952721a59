package keyevents

import "strings"

// classesOfA are the event classes the flag 'A' stands for, as Redis
// defines it: every class but key misses (m) and new keys (n). 'A' names
// no channel: K and E are never part of it.
const classesOfA = "g$lshzxetd"

// Missing returns the flags of required that current lacks, in the order
// of required.
func Missing(current, required string) string {
	var missing strings.Builder
	for _, flag := range required {
		covered := strings.ContainsRune(current, flag) ||
			(strings.ContainsRune(classesOfA, flag) && strings.ContainsRune(current, 'A'))
		if !covered {
			missing.WriteRune(flag)
		}
	}
	return missing.String()
}
