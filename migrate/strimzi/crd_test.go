package strimzi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/operation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	k8syaml "sigs.k8s.io/yaml"
)

// kubeJudge judges a KafkaConnector manifest as a Kubernetes API server with Strimzi's
// published KafkaConnector CRD installed (testdata/strimzi, with its source and licence)
// judges its creation by `kubectl apply`, with the API server's own code
// (k8s.io/apiextensions-apiserver and k8s.io/apimachinery, the release of k8s.io/api):
//
//   - the request's decoding under kubectl's default field validation, Strict: the manifest's
//     unknown fields, metadata's included, are errors (the custom resource handler's schema
//     coercion: GetObjectMetaWithOptions, PruneWithOptions, CoerceWithOptions), nulls of
//     non-nullable fields are dropped and defaults applied;
//   - the custom resource strategy's validation of a create: kind and apiVersion, the object's
//     metadata (ValidateObjectMetaDeclaratively: a DNS subdomain name, a namespace name, label
//     and annotation keys and values), the version's openAPIV3Schema (ValidateCustomResource),
//     embedded resources' metadata, list types and the CRD's CEL rules (x-kubernetes-
//     validations; Strimzi's KafkaConnector CRD has none).
//
// The manifest's apiVersion picks the version judged, as it picks it for the API server. What
// it leaves out: the scale subresource's check of spec.tasksMax (the CRD's specReplicasPath)
// as a replica count of at most 2^31-1, which lives in the API server's registry package,
// with the storage layer behind it; checkManifest has that rule as its own (Connect's
// tasks.max is a Java int too), and the table of TestCheckManifestRefuses says so.
type kubeJudge struct {
	group, kind string
	versions    map[string]*kubeVersion
}

// kubeVersion is one served version of the CRD, compiled as the API server compiles it.
type kubeVersion struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// strimziJudge reads the KafkaConnector CRD and compiles each version it serves.
func strimziJudge(t *testing.T) *kubeJudge {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "strimzi", "047-Crd-kafkaconnector.yaml"))
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, k8syaml.UnmarshalStrict(data, &crd))
	j := &kubeJudge{group: crd.Spec.Group, kind: crd.Spec.Names.Kind, versions: map[string]*kubeVersion{}}
	require.Equal(t, "kafka.strimzi.io", j.group)
	require.Equal(t, "KafkaConnector", j.kind)
	require.Equal(t, apiextensionsv1.NamespaceScoped, crd.Spec.Scope)
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		require.NotNil(t, v.Schema, "version %s has no schema", v.Name)
		var internal apiextensions.JSONSchemaProps
		require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil))
		s, err := structuralschema.NewStructural(&internal)
		require.NoError(t, err, "version %s", v.Name)
		require.Empty(t, structuralschema.ValidateStructural(nil, s), "version %s: not a structural schema", v.Name)
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		require.NoError(t, err, "version %s", v.Name)
		j.versions[v.Name] = &kubeVersion{structural: s, validator: validator, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
	}
	// Both are needed: operators before 0.49 serve only v1beta2, 1.x only v1 (docs/migration.md,
	// "Strimzi versions"), and the manifests are written in either (--strimzi-api-version).
	require.Contains(t, j.versions, StrimziV1)
	require.Contains(t, j.versions, StrimziV1beta2)
	return j
}

// refusal is one error of the API server: the field it names and what it says.
type refusal struct{ field, detail string }

func (r refusal) String() string { return r.field + ": " + r.detail }

// refusals returns the API server's errors for the creation of the manifest data (none: it
// is created). A namespaced resource without metadata.namespace is created in the namespace
// of the request (kubectl's current namespace): here "default".
func (j *kubeJudge) refusals(t *testing.T, data []byte) []refusal {
	t.Helper()
	js, err := k8syaml.YAMLToJSON(data)
	require.NoError(t, err)
	var obj map[string]any
	// The API server's decoding of unstructured JSON: integers as int64, other numbers as
	// float64.
	require.NoError(t, utiljson.Unmarshal(js, &obj))
	var out []refusal
	add := func(errs field.ErrorList) {
		for _, e := range errs {
			f := e.Field
			if f == "<nil>" { // an error of the schema's validator at no path (its text names it)
				f = ""
			}
			out = append(out, refusal{field: f, detail: e.ErrorBody()})
		}
	}

	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Group != j.group || j.versions[gv.Version] == nil {
		return append(out, refusal{field: "apiVersion", detail: fmt.Sprintf("%q: no %s of it is served", apiVersion, j.kind)})
	}
	if kind != j.kind {
		out = append(out, refusal{field: "kind", detail: fmt.Sprintf("%q: must be %s", kind, j.kind)})
	}
	v := j.versions[gv.Version]

	// Decoding, with field validation Strict.
	meta, found, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return append(out, refusal{field: "metadata", detail: err.Error()})
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, v.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		add(field.ErrorList{ferr})
	}
	unknown = append(unknown, paths...)
	for _, p := range unknown {
		out = append(out, refusal{field: p, detail: "unknown field (strict decoding)"})
	}
	if !found {
		meta = &metav1.ObjectMeta{}
	}
	if meta.Namespace == "" {
		meta.Namespace = "default"
	}
	require.NoError(t, schemaobjectmeta.SetObjectMeta(obj, meta))
	structuraldefaulting.Default(obj, v.structural)

	// The strategy's validation of a create.
	ctx := context.Background()
	var meta2 metav1.ObjectMeta
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj["metadata"].(map[string]any), &meta2))
	var errs field.ErrorList
	errs = append(errs, metavalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, &meta2, nil, true,
		metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"), false)...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, v.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, v.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if v.cel != nil && len(errs) == 0 {
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	add(errs)
	return out
}

// requireCreated fails t unless the API server creates the manifest data.
func (j *kubeJudge) requireCreated(t *testing.T, data []byte) {
	t.Helper()
	require.Empty(t, j.refusals(t, data), "the API server refuses:\n%s", data)
}

// fieldOf is the field a problem of checkManifest names: its text up to the first blank or
// colon ("spec.tasksMax" of `spec.tasksMax "1": not an integer from 1 to 2147483647`).
func fieldOf(problem string) string {
	if i := strings.IndexAny(problem, " :"); i >= 0 {
		return problem[:i]
	}
	return problem
}

// sameField reports whether two field paths name the same field, or one holds the other.
func sameField(a, b string) bool {
	return a == b || strings.HasPrefix(b, a+".") || strings.HasPrefix(a, b+".")
}
