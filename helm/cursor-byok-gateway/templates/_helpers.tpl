{{- /*
This chart uses only Go text/template built-ins (no sprig functions), so that CI renders it with
the real Go template engine (deploy/test/helm.test.ts). Structured values are written as JSON
(valid YAML flow) by "byok.json"; labels are flow mappings so they work at any indentation.
*/ -}}

{{- /* A value as JSON: maps, lists, strings (Go-quoted, valid YAML), numbers, bools, null. */ -}}
{{- define "byok.json" -}}
{{- $t := printf "%T" . -}}
{{- if or (eq $t "map[string]interface {}") (eq $t "chartutil.Values") -}}
{ {{- $first := true -}}
{{- range $k, $v := . -}}
{{- if not $first }}, {{ end -}}
{{- $first = false -}}
{{- printf "%q" $k }}: {{ template "byok.json" $v -}}
{{- end -}} }
{{- else if eq $t "[]interface {}" -}}
[ {{- range $i, $v := . -}}{{- if $i }}, {{ end -}}{{- template "byok.json" $v -}}{{- end -}} ]
{{- else if eq $t "string" -}}
{{- printf "%q" . -}}
{{- else if eq $t "<nil>" -}}
null
{{- else if eq $t "float64" -}}
{{- if eq (printf "%.6f" .) (printf "%.0f.000000" .) }}{{ printf "%.0f" . }}{{ else }}{{ . }}{{ end -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{- define "byok.fullname" -}}
{{- if .Values.fullnameOverride -}}{{ .Values.fullnameOverride }}{{- else if eq .Release.Name .Chart.Name -}}{{ .Release.Name }}{{- else -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
{{- end -}}

{{- define "byok.serviceAccountName" -}}
{{- if .Values.serviceAccount.name -}}{{ .Values.serviceAccount.name }}{{- else -}}{{ template "byok.fullname" . }}{{- end -}}
{{- end -}}

{{- define "byok.secretName" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecret }}{{- else -}}{{ template "byok.fullname" . }}{{- end -}}
{{- end -}}

{{- /* Labels of every object, as the inside of a flow mapping: `labels: { {{ template "byok.labels" . }}, more: x }`. */ -}}
{{- define "byok.labels" -}}
app.kubernetes.io/name: {{ printf "%q" .Chart.Name }}, app.kubernetes.io/instance: {{ printf "%q" .Release.Name }}, app.kubernetes.io/version: {{ printf "%q" .Chart.AppVersion }}, app.kubernetes.io/managed-by: {{ printf "%q" .Release.Service }}, helm.sh/chart: {{ printf "%q" (printf "%s-%s" .Chart.Name .Chart.Version) }}
{{- end -}}

{{- define "byok.selectorLabels" -}}
app.kubernetes.io/name: {{ printf "%q" .Chart.Name }}, app.kubernetes.io/instance: {{ printf "%q" .Release.Name }}
{{- end -}}

{{- define "byok.image" -}}
{{ printf "%q" (printf "%s:%s" .Values.image.repository .Values.image.tag) }}
{{- end -}}

{{- /* Pod-level settings shared by every component (inside `spec:` of a pod template, 6 spaces). */ -}}
{{- define "byok.podCommon" }}
      serviceAccountName: {{ template "byok.serviceAccountName" . }}
      automountServiceAccountToken: false
      securityContext: {{ template "byok.json" .Values.podSecurityContext }}
      imagePullSecrets: {{ template "byok.json" .Values.imagePullSecrets }}
      nodeSelector: {{ template "byok.json" .Values.nodeSelector }}
      tolerations: {{ template "byok.json" .Values.tolerations }}
      affinity: {{ template "byok.json" .Values.affinity }}
      volumes:
        - { name: tmp, emptyDir: { medium: Memory, sizeLimit: 64Mi } }
        {{- if .Values.config.routes }}
        - { name: config, configMap: { name: {{ template "byok.fullname" . }}-routes, items: [ { key: routes.json, path: routes.json } ] } }
        {{- end }}
{{- end -}}

{{- /* Container-level settings shared by every gateway container (inside a container, 10 spaces). */ -}}
{{- define "byok.containerCommon" }}
          image: {{ template "byok.image" . }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          securityContext: {{ template "byok.json" .Values.securityContext }}
          envFrom:
            - configMapRef: { name: {{ template "byok.fullname" . }} }
            - secretRef: { name: {{ template "byok.secretName" . }} }
          volumeMounts:
            - { name: tmp, mountPath: /tmp }
            {{- if .Values.config.routes }}
            - { name: config, mountPath: /etc/byok, readOnly: true }
            {{- end }}
{{- end -}}

{{- /*
Pod annotations: the user's, plus "byok/config", the non-secret configuration the ConfigMaps are
rendered from (Go's %v of the values: map keys sorted, so it is stable). A change to config.* or
otlpEndpoint changes every pod template and so rolls the pods, as Helm's usual
checksum/config annotation would; there is no hash function without sprig. Secret values are
never put here: after changing a Secret, restart the Deployments (docs/operations.md).
*/ -}}
{{- define "byok.podAnnotations" -}}
{ {{- range $k, $v := .Values.podAnnotations }}{{ printf "%q" $k }}: {{ printf "%q" (print $v) }}, {{ end -}}
"byok/config": {{ printf "%q" (printf "config=%v otlp=%v" .Values.config .Values.otlpEndpoint) }} }
{{- end -}}
