module github.com/batonlock/baton

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/resp v0.1.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
