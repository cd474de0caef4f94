package migrate

// Check returns the error Export would return for these options before reading anything
// (bad flags), so that a caller can refuse them before it waits for a cluster.
func (o Options) Check() error {
	o.defaults()
	return o.validate()
}

// Check returns the error Migrate would return for these options before reading anything.
func (o MigrateOptions) Check() error {
	if err := o.validateTarget(); err != nil {
		return err
	}
	return o.Options.Check()
}
