package events

import (
	"embed"
)

// schemaBaseURI prefixes every schema's $id. The URIs identify the schemas; they are not
// promised to be fetchable, which is why the agent embeds the schemas and Schema serves them.
const schemaBaseURI = "https://offsetagent.dev/schema/"

// schemaFiles holds the JSON Schemas (draft 2020-12) of the request and result data.
//
//go:embed schema/*.json
var schemaFiles embed.FS

// schemaFile returns the file name under schema/ of eventType's data schema, or "" for a type
// that has none.
func schemaFile(eventType string) string {
	switch eventType {
	case TypeCreateRequest:
		return "create-request.json"
	case TypeCreateSucceeded:
		return "result-succeeded.json"
	case TypeCreateFailed:
		return "result-failed.json"
	case TypeCreatePlanned:
		return "result-planned.json"
	default:
		return ""
	}
}

// SchemaURI returns the $id of the JSON Schema of eventType's data, the value of the
// dataschema attribute of events of that type, or "" for an unknown type.
func SchemaURI(eventType string) string {
	f := schemaFile(eventType)
	if f == "" {
		return ""
	}
	return schemaBaseURI + f
}

// Schema returns the JSON Schema document of eventType's data, and false for an unknown type.
// The bytes are a fresh copy the caller may keep or modify.
func Schema(eventType string) ([]byte, bool) {
	f := schemaFile(eventType)
	if f == "" {
		return nil, false
	}
	b, err := schemaFiles.ReadFile("schema/" + f)
	if err != nil {
		// Unreachable: every name schemaFile returns is embedded, which schema_test checks.
		return nil, false
	}
	return b, true
}
