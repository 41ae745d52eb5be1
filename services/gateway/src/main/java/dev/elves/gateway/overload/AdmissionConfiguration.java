package dev.elves.gateway.overload;

import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;

/** The admission filter, ahead of every other filter (security included). */
@Configuration(proxyBeanMethods = false)
class AdmissionConfiguration {

	@Bean
	FilterRegistrationBean<AdmissionFilter> admissionFilter(AdmissionProperties properties, MeterRegistry meters) {
		FilterRegistrationBean<AdmissionFilter> registration = new FilterRegistrationBean<>(
				new AdmissionFilter(properties, meters));
		registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
		registration.addUrlPatterns("/api/*");
		return registration;
	}

}
