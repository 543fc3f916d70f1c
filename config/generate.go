package config

// docs/configuration.md is written from the keys table.
//go:generate go run ./gen
