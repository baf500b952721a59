package redisproc

import "strings"

// KeySlot returns the hash slot of key, as Redis Cluster computes it:
// CRC16 (XMODEM) of the key modulo 16384, where a key that holds a hash
// tag, a non-empty part between its first '{' and the first '}' after
// it, is hashed by that part alone. So "{user1}.a" and "{user1}.b" share a
// slot, while "{}a", whose first braces enclose nothing, is hashed whole,
// and "a{b}c{d}" by "b". It lets a test place keys, and find their node
// with Cluster.Primary, without asking a server (CLUSTER KEYSLOT).
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return int(crc16(key) % clusterSlots)
}

// crc16 is CRC-16/XMODEM: polynomial 0x1021, initial value 0, no
// reflection, no final XOR; the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
