# Parley in a container: the bot on SQLite in the /data volume, the web
# chat, API, console, /healthz and /metrics on port 8080.
#
#   docker build -t parley .
#   docker run -d --name parley -p 127.0.0.1:8080:8080 -v parley-data:/data \
#     --env-file deploy/parley.env --stop-timeout 45 parley
#
# The default config is deploy/config.docker.yaml (at /etc/parley/config.yaml);
# mount your own there to change it. deploy/README.md has the details, and
# compose.yaml runs two replicas on PostgreSQL.
#
# The image has no .git to read the commit from: pass it to `parley version`
#   docker build --build-arg PARLEY_COMMIT=$(git rev-parse HEAD) \
#     --build-arg PARLEY_DATE=$(git log -1 --format=%cI) -t parley .

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
# The golang image has gcc and libc6-dev: cgo builds the SQLite driver.
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG PARLEY_VERSION=""
ARG PARLEY_COMMIT=""
ARG PARLEY_DATE=""
# deploy/build.sh holds the exact go build command; CI runs it too.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    sh deploy/build.sh /out/parley

FROM debian:bookworm-slim
# The binary links glibc (cgo); it needs CA certificates for the model and
# the platforms, and tzdata for users' time zones (also built in).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 parley \
 && useradd --uid 10001 --gid parley --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin parley \
 && mkdir -p /data \
 && chown parley:parley /data
COPY --from=build /out/parley /usr/local/bin/parley
COPY deploy/config.docker.yaml /etc/parley/config.yaml

# Goroutines start with a small stack: Go would size them by the
# average, which the turns' deep stacks raise for every connection's
# goroutines (26-37 MB less at the peak of 2,000 users at once,
# BENCHMARKS.md). Only the environment can set it.
ENV GODEBUG=adaptivestackstart=0

USER 10001:10001
WORKDIR /data
VOLUME /data
EXPOSE 8080

# parley health GETs /healthz on the address in the config: the store and
# the adapters, never the model (a model outage is not an unhealthy bot).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 \
  CMD ["parley", "health", "-c", "/etc/parley/config.yaml"]

# Exec form: parley is PID 1 and gets SIGTERM from `docker stop`, drains
# in-flight turns (up to 30 s) and exits 0. Give it the time (Docker
# waits 10 s): `docker run --stop-timeout 45`, stop_grace_period in compose.
STOPSIGNAL SIGTERM
ENTRYPOINT ["parley"]
CMD ["run", "-c", "/etc/parley/config.yaml"]
