{{/*
Helpers of the svc chart. Every template here renders YAML (or nothing) so that
test/chart.test.ts can expand them into the manifests that include them and check the result.
*/}}

{{/* Chart name, overridable. */}}
{{- define "svc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-qualified name of the API Deployment, Service, ConfigMap and ServiceAccount. */}}
{{- define "svc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "svc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels selecting the pods of this release (a component label is added per Deployment). */}}
{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "svc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "svc.labels" -}}
helm.sh/chart: {{ include "svc.chart" . }}
{{ include "svc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "svc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "svc.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "svc.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Port of the data-apps listener, from config.apps.listen (host:port). */}}
{{- define "svc.appsPort" -}}
{{- regexReplaceAll "^.*:" (toString .Values.config.apps.listen) "" -}}
{{- end -}}

{{/*
svc.toml from .Values.config. Secret-bearing keys are refused here: they reach the pods only
through secretKeyRef variables (svc.env), never through a ConfigMap.
*/}}
{{- define "svc.configToml" -}}
{{- $config := .Values.config | default (dict) -}}
{{- range $path := list "security.secret_key" "secrets.master_key" "storage.access_key" "storage.secret_key" "database.url" "oidc.client_secret" "catalog.auth_token" "policy_service.auth_token" -}}
{{- $parts := splitList "." $path -}}
{{- $section := index $config (index $parts 0) | default (dict) -}}
{{- if hasKey $section (index $parts 1) -}}
{{- fail (printf "config.%s must not be set in values: name an existing Secret under secrets.* instead" $path) -}}
{{- end -}}
{{- end -}}
# svc.toml rendered by the Helm chart from .Values.config; secrets arrive as SVC_* variables.
{{ toToml $config }}
{{- end -}}

{{/*
Refusals that keep a deployment within SPEC 5.3. Renders nothing; fails the install instead.
*/}}
{{- define "svc.validate" -}}
{{- if eq (toString .Values.config.workflow.container_runner) "local_container" -}}
{{- fail "config.workflow.container_runner = local_container is for development only (SPEC 5.3 item 6): use cluster or none" -}}
{{- end -}}
{{- range .Values.extraEnv -}}
{{- if eq (toString .name) "SVC_ENGINE_TLS_INSECURE" -}}
{{- fail "extraEnv must not set SVC_ENGINE_TLS_INSECURE: development only (SPEC 5.3 item 5)" -}}
{{- end -}}
{{- if has (toString .name) (list "SVC_SECURITY__SECRET_KEY" "SVC_SECRETS__MASTER_KEY" "SVC_DATABASE__URL" "SVC_STORAGE__ACCESS_KEY" "SVC_STORAGE__SECRET_KEY" "SVC_OIDC__CLIENT_SECRET" "SVC_CATALOG__AUTH_TOKEN" "SVC_POLICY_SERVICE__AUTH_TOKEN" "SVC_REDIS__URL") -}}
{{- fail (printf "extraEnv must not carry %s: name an existing Secret under secrets.* instead" .name) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.config.oidc.enabled (not (hasPrefix "https://" (toString (dig "oidc" "issuer_url" "" .Values.config)))) -}}
{{- fail "config.oidc.issuer_url must be an https:// URL when config.oidc.enabled is true (SPEC 5.3 item 4)" -}}
{{- end -}}
{{- if and .Values.ingress.tls (not .Values.config.session.secure) -}}
{{- fail "config.session.secure must be true when the Ingress serves HTTPS (SPEC 5.3 item 2)" -}}
{{- end -}}
{{- range .Values.ingress.uiPaths -}}
{{- if or (eq (toString .) "/") (regexMatch "^/(service|metrics|healthz|readyz|admin)(/|$)" (toString .)) -}}
{{- fail (printf "ingress.uiPaths must not route %s: /service, /metrics, /healthz, /readyz and /admin stay internal, and / is routed exactly (SPEC 5.3 item 3)" .) -}}
{{- end -}}
{{- end -}}
{{- range .Values.ingress.webhookWorkspaces -}}
{{- if not (regexMatch "^[a-z0-9][a-z0-9_-]*$" (toString .)) -}}
{{- fail (printf "ingress.webhookWorkspaces: %q is not a workspace slug" .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.config.apps.origin .Values.ingress.enabled -}}
{{- if eq (urlParse .Values.config.apps.origin).hostname (toString .Values.ingress.host) -}}
{{- fail "config.apps.origin must be a sibling subdomain, never the service's own host (SPEC 5.3 item 8)" -}}
{{- end -}}
{{- end -}}
{{- if not (or (dig "redis" "url" "" .Values.config) .Values.secrets.redisUrl.existingSecret .Values.secrets.existingSecret) -}}
{{- fail "set config.redis.url (or secrets.redisUrl): the built-in redis://127.0.0.1:6379 is not reachable from a pod" -}}
{{- end -}}
{{- end -}}

{{/*
Environment of every svc container: the secret-bearing keys as secretKeyRef variables (the
environment wins over svc.toml), then extraEnv. Required references `fail` when no Secret is
named; optional ones are marked optional so a missing key leaves the built-in default.
*/}}
{{- define "svc.env" -}}
- name: SVC_SECURITY__SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.securitySecretKey.existingSecret (or secrets.existingSecret) must name an existing Secret holding security.secret_key" (coalesce .Values.secrets.securitySecretKey.existingSecret .Values.secrets.existingSecret) | quote }}
      key: {{ required "secrets.securitySecretKey.key is required" .Values.secrets.securitySecretKey.key | quote }}
- name: SVC_SECRETS__MASTER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.secretsMasterKey.existingSecret (or secrets.existingSecret) must name an existing Secret holding secrets.master_key" (coalesce .Values.secrets.secretsMasterKey.existingSecret .Values.secrets.existingSecret) | quote }}
      key: {{ required "secrets.secretsMasterKey.key is required" .Values.secrets.secretsMasterKey.key | quote }}
- name: SVC_DATABASE__URL
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.databaseUrl.existingSecret (or secrets.existingSecret) must name an existing Secret holding database.url" (coalesce .Values.secrets.databaseUrl.existingSecret .Values.secrets.existingSecret) | quote }}
      key: {{ required "secrets.databaseUrl.key is required" .Values.secrets.databaseUrl.key | quote }}
- name: SVC_STORAGE__ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.storageAccessKey.existingSecret (or secrets.existingSecret) must name an existing Secret holding storage.access_key" (coalesce .Values.secrets.storageAccessKey.existingSecret .Values.secrets.existingSecret) | quote }}
      key: {{ required "secrets.storageAccessKey.key is required" .Values.secrets.storageAccessKey.key | quote }}
- name: SVC_STORAGE__SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.storageSecretKey.existingSecret (or secrets.existingSecret) must name an existing Secret holding storage.secret_key" (coalesce .Values.secrets.storageSecretKey.existingSecret .Values.secrets.existingSecret) | quote }}
      key: {{ required "secrets.storageSecretKey.key is required" .Values.secrets.storageSecretKey.key | quote }}
{{- $catalogSecret := coalesce .Values.secrets.catalogAuthToken.existingSecret .Values.secrets.existingSecret }}
{{- if or .Values.config.catalog.enabled $catalogSecret }}
- name: SVC_CATALOG__AUTH_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ required "secrets.catalogAuthToken.existingSecret (or secrets.existingSecret) must name an existing Secret holding catalog.auth_token when config.catalog.enabled is true" $catalogSecret | quote }}
      key: {{ required "secrets.catalogAuthToken.key is required" .Values.secrets.catalogAuthToken.key | quote }}
      optional: {{ not .Values.config.catalog.enabled }}
{{- end }}
{{- with coalesce .Values.secrets.redisUrl.existingSecret .Values.secrets.existingSecret }}
- name: SVC_REDIS__URL
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $.Values.secrets.redisUrl.key | quote }}
      optional: true
{{- end }}
{{- with coalesce .Values.secrets.oidcClientSecret.existingSecret .Values.secrets.existingSecret }}
- name: SVC_OIDC__CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $.Values.secrets.oidcClientSecret.key | quote }}
      optional: true
{{- end }}
{{- with coalesce .Values.secrets.policyServiceAuthToken.existingSecret .Values.secrets.existingSecret }}
- name: SVC_POLICY_SERVICE__AUTH_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $.Values.secrets.policyServiceAuthToken.key | quote }}
      optional: true
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod-level security context: the image's non-root uid, no privilege, default seccomp. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.podSecurityContext.runAsUser }}
runAsGroup: {{ .Values.podSecurityContext.runAsGroup }}
fsGroup: {{ .Values.podSecurityContext.fsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "svc.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
{{- end -}}

{{/* svc.toml in the working directory (/etc/svc), and a writable /tmp. */}}
{{- define "svc.volumeMounts" -}}
- name: config
  mountPath: /etc/svc
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}
