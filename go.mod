module collab

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/sys v0.49.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
