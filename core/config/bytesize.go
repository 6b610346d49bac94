package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes written with a unit: "20MiB", "512KiB",
// "1GB", or a bare number of bytes.
type ByteSize int64

// byteUnits are the suffixes ByteSize reads, longest first so that "MiB"
// is not read as "B".
var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"B", 1},
}

// UnmarshalText reads a size like "20MiB".
func (b *ByteSize) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	mult := int64(1)
	num := s
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 || n*float64(mult) > float64(1<<50) {
		return fmt.Errorf(`invalid size %q: want a number of bytes with a unit, like "20MiB" or "512KiB"`, s)
	}
	*b = ByteSize(n * float64(mult))
	return nil
}

// String writes the size the way the config reads it.
func (b ByteSize) String() string {
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(b) >= u.n && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}
