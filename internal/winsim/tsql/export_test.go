package tsql

// AppLockPoll is how often a waiting sp_getapplock looks again.
const AppLockPoll = appLockPoll

// FileCost is what creating or growing a data or log file by kb costs an engine
// with the default figures.
func FileCost(log bool, kb int64, ifi, tde bool) FileOperation {
	return FileCostWith(Config{}, log, kb, ifi, tde)
}

// FileCostWith is FileCost for an engine configured with cfg's zeroing figures.
func FileCostWith(cfg Config, log bool, kb int64, ifi, tde bool) FileOperation {
	return New(nil, cfg).fileCost(&dbFile{name: "f", log: log}, kb, ifi, tde)
}
