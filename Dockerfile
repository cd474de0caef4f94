# Build a static binary, then ship it alone on a distroless, non-root base.
# `make docker` (and `make up`) pass VERSION and COMMIT; they are stamped into
# `offsetagent version`, offsetagent_build_info and the image's OCI labels.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/offsetagent ./cmd/offsetagent

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="offsetagent" \
      org.opencontainers.image.description="KIP-995 for Kafka Connect: create connectors born at chosen offsets" \
      org.opencontainers.image.source="https://github.com/offsetagent/offsetagent" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/offsetagent /offsetagent
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/offsetagent"]
CMD ["run"]
