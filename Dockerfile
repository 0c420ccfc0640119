# syntax=docker/dockerfile:1
#
# cellfed's images for users with Docker (or Podman, Buildah), one binary
# per image, chosen with the BINARY build argument:
#
#   docker build --build-arg BINARY=cellfed-apiserver \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     -t ghcr.io/cellfed/cellfed-apiserver:v0.1.0 .
#
# BINARY is one of cellfed-apiserver, cellfed-controller, cellfed-agent,
# cellfed-kms, cellfed-webhook, cellfed-proxy.
#
# `make images` (hack/images) builds the same images without a Docker
# engine: keep the two consistent. Both link the binary statically (cgo for
# SQLite, the netgo/osusergo/sqlite_omit_load_extension tags, -s -w
# -linkmode external -extldflags -static: hack/images/build.go's StaticTags
# and StaticLDFlags), put it at /usr/local/bin/<binary> on an empty base
# with /etc/passwd and /etc/group naming nonroot, /home/nonroot and /tmp,
# run as 65532:65532 and carry the same org.opencontainers.image labels.
# This file is not tested here (no Docker engine on the build machine);
# hack/images' TestImages tests the images `make images` builds.

ARG BINARY=cellfed-apiserver
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
ARG BINARY
# The VERSION file and the Makefile's K8S_VERSION; REVISION is the git commit and
# BUILD_DATE its time (git log -1 --format=%cI), as `make images` stamps them.
ARG VERSION=v0.1.0
ARG K8S_VERSION=v1.36.4
ARG REVISION=unknown
ARG BUILD_DATE=1970-01-01T00:00:00Z
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    short=$(printf '%.12s' "${REVISION}") && \
    CGO_ENABLED=1 GOOS=linux go build \
      -tags netgo,osusergo,sqlite_omit_load_extension \
      -ldflags "-X k8s.io/component-base/version.gitVersion=${K8S_VERSION}+cellfed.${VERSION}.${short} \
        -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 \
        -X k8s.io/component-base/version.gitCommit=${short} -X k8s.io/component-base/version.gitTreeState=clean \
        -X k8s.io/component-base/version.buildDate=${BUILD_DATE} \
        -s -w -linkmode external -extldflags -static" \
      -o /out/usr/local/bin/${BINARY} ./cmd/${BINARY}
RUN mkdir -p /out/etc /out/home/nonroot /out/tmp && \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/etc/passwd && \
    printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group && \
    chown 65532:65532 /out/home/nonroot && chmod 0700 /out/home/nonroot && chmod 1777 /out/tmp

FROM scratch AS base
ARG BINARY
ARG VERSION=v0.1.0
ARG REVISION=unknown
ARG BUILD_DATE=1970-01-01T00:00:00Z
COPY --from=build /out/ /
LABEL org.opencontainers.image.title=${BINARY} \
      org.opencontainers.image.source=https://github.com/cellfed/cellfed \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.licenses=Apache-2.0 \
      org.opencontainers.image.created=${BUILD_DATE}
ENV PATH=/usr/local/bin HOME=/home/nonroot
WORKDIR /home/nonroot
USER 65532:65532

# ENTRYPOINT does not expand build arguments: one stage per binary, and
# the last stage picks one by BINARY.
FROM base AS cellfed-apiserver
ENTRYPOINT ["/usr/local/bin/cellfed-apiserver"]
FROM base AS cellfed-controller
ENTRYPOINT ["/usr/local/bin/cellfed-controller"]
FROM base AS cellfed-agent
ENTRYPOINT ["/usr/local/bin/cellfed-agent"]
FROM base AS cellfed-kms
ENTRYPOINT ["/usr/local/bin/cellfed-kms"]
FROM base AS cellfed-webhook
ENTRYPOINT ["/usr/local/bin/cellfed-webhook"]
FROM base AS cellfed-proxy
ENTRYPOINT ["/usr/local/bin/cellfed-proxy"]

FROM ${BINARY}
