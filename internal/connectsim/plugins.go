package connectsim

import (
	"fmt"
	"net/http"
	"strings"
)

// noSuchClass is Connect's text for a connector.class no installed plugin has
// (docs/connect-internals.md, "Validating a new connector"); the list after it names the
// plugins as Connect's PluginDesc does, in short.
func (s *Sim) noSuchClass(class string) string {
	descs := make([]string, len(s.plugins))
	for i, p := range s.plugins {
		descs[i] = fmt.Sprintf("PluginDesc{klass=class %s, name='%s', version='%s', type=%s, typeName='%s'}", p.Class, p.Class, p.Version, p.Type, p.Type)
	}
	return "Failed to find any class that implements Connector and which name matches " + class +
		", available connectors are: " + strings.Join(descs, ", ")
}

// normalizedPluginName is ConnectorPluginsResource's: a name without a trailing "Connector".
func normalizedPluginName(name string) string {
	if strings.HasSuffix(name, "Connector") && len(name) > len("Connector") {
		return name[:len(name)-len("Connector")]
	}
	return name
}

// validate is PUT /connector-plugins/{class}/config/validate: a class of the config other
// than the path's is a 400 (ConnectorPluginsResource), an exception of the validation a 500
// naming the exception's class (the endpoint answers the ExecutionException around it), and an
// installed class's config has no error: the sim has no ConfigDef to check it against.
func (s *Sim) validate(pluginName string, r *http.Request) (answer, error) {
	b, err := readBody(r)
	if err != nil {
		return answer{}, err
	}
	cfg, err := parseConfig(b)
	if err != nil {
		return answer{}, err
	}
	if included, ok := cfg.Get("connector.class"); ok && !strings.HasSuffix(normalizedPluginName(included), normalizedPluginName(pluginName)) {
		return answer{}, errorf(http.StatusBadRequest, "Included connector type %s does not match request type %s", included, pluginName)
	}
	const badRequest = "org.apache.kafka.connect.runtime.rest.errors.BadRequestException: "
	class, ok := cfg.Get("connector.class")
	if !ok || class == "" {
		return answer{}, errorf(http.StatusInternalServerError, "%sConnector config %s contains no connector type", badRequest, javaMapString(cfg))
	}
	p, ok := s.byName[class]
	if !ok {
		return answer{}, errorf(http.StatusInternalServerError, "%s%s", badRequest, s.noSuchClass(class))
	}
	return answer{code: http.StatusOK, body: map[string]any{"name": p.Class, "error_count": 0, "groups": []string{}, "configs": []any{}}}, nil
}
