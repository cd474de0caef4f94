# Build a static binary, then ship it alone on a distroless, non-root base.
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
COPY --from=build /out/offsetagent /offsetagent
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/offsetagent"]
CMD ["run"]
