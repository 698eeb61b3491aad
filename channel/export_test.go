package channel

// Listings reports how many times r listed its folder.
func Listings(r *Reader) int { return r.listings }
