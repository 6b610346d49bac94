//go:build !linux && !darwin

package store

func writable(string) error { return nil }

func freeSpace(string) string { return "" }
