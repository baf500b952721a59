package cluster

import "strings"

// slotCount is how many hash slots a Redis Cluster has.
const slotCount = 16384

// Slot returns the hash slot of key, from 0 to 16383, as Redis Cluster
// computes it: CRC16 (the XMODEM variant) of the key modulo 16384. When the key holds a hash
// tag, only the tag is hashed: the bytes between the first '{' and the
// first '}' after it, if there is at least one byte between them. So
// "{user1}.a" and "{user1}.b" share a slot, while "{}x" hashes whole and
// "a{b}c{d}" hashes as "b". The key is taken as bytes, not runes.
func Slot(key string) int {
	return int(crc16(HashTag(key)) % slotCount)
}

// HashTag is the part of key that Redis Cluster hashes (see Slot): the
// bytes between the first '{' and the first '}' after it, if there is at
// least one, else the whole key. Keys with one hash tag share a slot
// whatever the rest of them; keys with different tags may share one by
// chance, which is no rule to build on.
func HashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			return key[open+1 : open+1+n]
		}
	}
	return key
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), which is what Redis calls crc16.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// crc16Table holds the CRC of every byte value, computed once.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
