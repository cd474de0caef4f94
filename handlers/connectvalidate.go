package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/offsetagent/offsetagent/internal/connectrest"
	"github.com/offsetagent/offsetagent/internal/kafkaio"
)

// ConnectValidator is the ConfigValidator of a Kafka Connect cluster's REST API
// (docs/connect-internals.md, "Validating a new connector"), over a connectrest.Client: it
// answers as POST /connectors would. Connect's own error answers are a *Failure with its
// status and text (ReasonPermanent); an answer that says "try again" and an unreachable
// cluster stay the client's errors, which Classify calls transient.
type ConnectValidator struct {
	c *connectrest.Client
}

// NewConnectValidator returns the ConfigValidator that asks c.
func NewConnectValidator(c *connectrest.Client) *ConnectValidator {
	return &ConnectValidator{c: c}
}

// Exists reports whether the cluster has the connector (GET /connectors/{name}).
func (v *ConnectValidator) Exists(ctx context.Context, name string) (bool, error) {
	ok, err := v.c.Exists(ctx, name)
	return ok, connectFailure(err)
}

// Validate runs PUT /connector-plugins/{class}/config/validate with config as the body. A
// response with errors is a *Failure (400) with the text Connect's POST /connectors would give
// (AbstractHerder.maybeAddConfigErrors); an exception of the validation (an unknown class) is a
// *Failure with the status and text POST would give (postAnswer). The validate response carries no connector type
// (ConfigInfos has only name, error_count, groups and configs), so the type comes from GET
// /connector-plugins: "source" or "sink", or "unknown" when the class is not listed.
func (v *ConnectValidator) Validate(ctx context.Context, class string, config map[string]string) (string, error) {
	infos, err := v.c.Validate(ctx, class, config)
	if err != nil {
		return "", postAnswer(connectFailure(err))
	}
	if infos.ErrorCount > 0 {
		return "", &Failure{Code: http.StatusBadRequest, Message: validateMessage(infos), Reason: kafkaio.ReasonPermanent}
	}
	return v.pluginType(ctx, class)
}

// connectFailure is err with Connect's own error answer (a *connectrest.Error) as the Failure
// of a request: its code and text, permanent. Other errors come back as they are.
func connectFailure(err error) error {
	var ce *connectrest.Error
	if !errors.As(err, &ce) {
		return err
	}
	return &Failure{Code: ce.Code, Message: ce.Message, Reason: kafkaio.ReasonPermanent}
}

// postAnswer turns the validate endpoint's answer to an exception of the config's validation
// into the answer POST /connectors gives for the same config. Both run
// AbstractHerder.validateConnectorConfig and wait for it on a callback, but they answer its
// exception differently: POST answers the exception itself (HerderRequestHandler unwraps it),
// with its status (ConnectExceptionMapper: BadRequestException 400, as for an unknown
// connector.class, NotFoundException 404, AlreadyExistsException 409, any other 500) and its
// message; the validate endpoint answers 500 with the ExecutionException that wraps it, whose
// message is the exception's toString, "<class>: <message>" (docs/connect-internals.md, "Validating a new connector").
// Other errors are returned as they are.
func postAnswer(err error) error {
	var f *Failure
	if !errors.As(err, &f) || f.Code != http.StatusInternalServerError {
		return err
	}
	class, message, ok := strings.Cut(f.Message, ": ")
	if !ok || !javaThrowable(class) {
		return err
	}
	out := *f
	out.Message = message
	switch class {
	case "org.apache.kafka.connect.runtime.rest.errors.BadRequestException":
		out.Code = http.StatusBadRequest
	case "org.apache.kafka.connect.errors.NotFoundException":
		out.Code = http.StatusNotFound
	case "org.apache.kafka.connect.errors.AlreadyExistsException":
		out.Code = http.StatusConflict
	}
	return &out
}

// javaThrowable reports whether s reads as the full name of a Java exception or error class
// (a dotted name whose last part ends in "Exception" or "Error"), as Throwable.toString starts.
func javaThrowable(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for i, r := range p {
			if !(r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
				return false
			}
		}
	}
	last := parts[len(parts)-1]
	return strings.HasSuffix(last, "Exception") || strings.HasSuffix(last, "Error")
}

// pluginType looks class up in GET /connector-plugins?connectorsOnly=true by full name, simple
// name or simple name without "Connector", the names Connect resolves connector.class by.
func (v *ConnectValidator) pluginType(ctx context.Context, class string) (string, error) {
	plugins, err := v.c.Plugins(ctx)
	if err != nil {
		return "", connectFailure(err)
	}
	typ, matches := "unknown", 0
	for _, p := range plugins {
		if p.Class == class {
			return p.Type, nil
		}
		simple := p.Class[strings.LastIndexByte(p.Class, '.')+1:]
		if pruned, _ := strings.CutSuffix(simple, "Connector"); class == simple || (pruned != "" && class == pruned) {
			typ = p.Type
			matches++
		}
	}
	if matches != 1 {
		// Not installed, or an alias two plugins share: Connect refuses such an alias too.
		return "unknown", nil
	}
	return typ, nil
}

// validateMessage is the text POST /connectors answers a config with errors with: the count,
// every error in response order, and the pointer to the validate endpoint
// (AbstractHerder.maybeAddConfigErrors).
func validateMessage(ci connectrest.ConfigInfos) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Connector configuration is invalid and contains the following %d error(s):", ci.ErrorCount)
	for _, c := range ci.Configs {
		for _, e := range c.Value.Errors {
			b.WriteString("\n")
			b.WriteString(e)
		}
	}
	b.WriteString("\nYou can also find the above list of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`")
	return b.String()
}

var _ ConfigValidator = (*ConnectValidator)(nil)
